/* server_util.c -- see server_util.h. */
#include "server_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_util.h"
#include "wire/cp_wire.h"
#include "streams/cp_streams.h"

static int64_t now_ms(void) { return (int64_t)(cp_mono_ns() / 1000000u); }

/* ---- registry of started servers (copies: the test's own struct may be gone after a
 * failed assertion longjmp'ed out of its stack frame) ---------------------------------------- */

typedef struct live_server {
    int used;
    int log_printed; /* by server_fail: teardown need not print it again */
    pid_t pid;
    char root[1024];
    char log[1100];
} live_server;

static live_server live[16];

static live_server *live_find(const char *root)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(live); i++)
        if (live[i].used && strcmp(live[i].root, root) == 0) return &live[i];
    return NULL;
}

static void live_set(const test_server *s)
{
    live_server *l = live_find(s->root);
    for (size_t i = 0; !l && i < CP_ARRAY_LEN(live); i++)
        if (!live[i].used) {
            l = &live[i];
            memset(l, 0, sizeof *l);
        }
    if (!l) fail_msg("too many test servers at once");
    l->used = 1;
    l->pid = s->pid;
    snprintf(l->root, sizeof l->root, "%s", s->root);
    snprintf(l->log, sizeof l->log, "%s", s->log);
}

static void print_log_file(const char *path)
{
    FILE *f = fopen(path, "r");
    printf("----- server log %s -----\n", path);
    if (f) {
        char line[4096];
        while (fgets(line, sizeof line, f)) fputs(line, stdout);
        fclose(f);
    } else {
        printf("(no log)\n");
    }
    printf("----- end of server log -----\n");
    fflush(stdout);
}

int servers_teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < CP_ARRAY_LEN(live); i++) {
        live_server *l = &live[i];
        if (!l->used) continue;
        /* the test did not clean up: it failed; show what the server said */
        if (!l->log_printed) print_log_file(l->log);
        if (l->pid > 0) {
            kill(l->pid, SIGKILL);
            waitpid(l->pid, NULL, 0);
        }
        printf("test data kept in %s\n", l->root);
        l->used = 0;
    }
    return 0;
}

/* ---- the server process -------------------------------------------------------------------- */

void server_print_log(const test_server *s) { print_log_file(s->log); }

void server_fail(const test_server *s, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    server_print_log(s);
    live_server *l = live_find(s->root);
    if (l) l->log_printed = 1;
    fail_msg("%s", msg);
}

/* Starts cloudprof with argv (argv[0] is replaced by the binary's path) in a child that
 * dies with the test: stdin from /dev/null, stdout to `out` and stderr to `err` (created
 * afresh), or both appended to `out` when err is NULL. */
static pid_t spawn_bin(const char *const *argv, const char *out, const char *err)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
        int o = open(out, O_WRONLY | O_CREAT | (err ? O_TRUNC : O_APPEND), 0644);
        int e = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : o;
        int null = open("/dev/null", O_RDONLY);
        if (o >= 0) dup2(o, 1);
        if (e >= 0) dup2(e, 2);
        if (null >= 0) dup2(null, 0);
        execv(CLOUDPROF_BIN, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void spawn(test_server *s, const char *const *extra)
{
    const char *argv[64];
    size_t n = 0;
    const char *base[] = {"cloudprof", "serve", "--agent-host", "127.0.0.1", "--agent-port", "auto",
                          "--http-host", "127.0.0.1", "--http-port", "0",
                          "--data", s->data, "--ready-file", s->ready};
    for (size_t i = 0; i < CP_ARRAY_LEN(base); i++) argv[n++] = base[i];
    int compact_flag = 0;
    for (size_t i = 0; extra && extra[i]; i++) {
        if (n >= CP_ARRAY_LEN(argv) - 3) fail_msg("too many server arguments");
        if (!strcmp(extra[i], "--compact-every")) compact_flag = 1;
        argv[n++] = extra[i];
    }
    /* the old data of the fixtures would otherwise be compacted while a test inspects the
     * hot tier: tests that want compaction say --compact-every */
    if (!compact_flag) {
        argv[n++] = "--compact-every";
        argv[n++] = "0";
    }
    argv[n] = NULL;

    unlink(s->ready);
    FILE *lf = fopen(s->log, "a");
    if (lf) {
        fprintf(lf, "=== %s", CLOUDPROF_BIN);
        for (size_t i = 1; i < n; i++) fprintf(lf, " %s", argv[i]);
        fprintf(lf, "\n");
        fclose(lf);
    }
    pid_t pid = spawn_bin(argv, s->log, NULL);
    s->pid = pid;
    s->port = 0;
    s->tls_port = 0;
    live_set(s);

    /* wait for the ready file: agent_port=N\nhttp_port=M\n */
    int64_t deadline = now_ms() + SRV_TIMEOUT_MS;
    for (;;) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            s->pid = 0;
            live_set(s);
            server_fail(s, "cloudprof serve exited before it was ready (status 0x%x)", status);
        }
        cp_buf b;
        cp_buf_init(&b);
        if (cp_read_file(s->ready, 4096, &b) == CP_OK && b.len > 0 && b.data[b.len - 1] == '\n') {
            int port = 0, http_port = 0, tls_port = 0;
            cp_buf_putc(&b, 0);
            const char *line = strstr((const char *)b.data, "agent_port=");
            const char *hline = strstr((const char *)b.data, "\nhttp_port=");
            const char *tline = strstr((const char *)b.data, "\nagent_tls_port=");
            if (tline && (sscanf(tline + 1, "agent_tls_port=%d", &tls_port) != 1 || tls_port <= 0 || tls_port > 65535))
                tls_port = -1;
            /* agent_port=0: the plain port is off (a TLS-only server) */
            if (line && (line == (const char *)b.data || line[-1] == '\n') && sscanf(line, "agent_port=%d", &port) == 1 &&
                port >= (tls_port > 0 ? 0 : 1) && port < 65536 && tls_port >= 0 && hline &&
                sscanf(hline + 1, "http_port=%d", &http_port) == 1 && http_port > 0 && http_port < 65536) {
                cp_buf_free(&b);
                s->port = port;
                s->http_port = http_port;
                s->tls_port = tls_port;
                return;
            }
            cp_buf_free(&b);
            server_fail(s, "ready file %s does not hold agent_port=N and http_port=M", s->ready);
        }
        cp_buf_free(&b);
        if (now_ms() > deadline) server_fail(s, "no ready file after %d ms", SRV_TIMEOUT_MS);
        sleep_ms(10);
    }
}

void server_start(test_server *s, const char *tag, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    signal(SIGPIPE, SIG_IGN);
    char *root = make_temp_dir(tag);
    snprintf(s->root, sizeof s->root, "%s", root);
    free(root);
    snprintf(s->data, sizeof s->data, "%s/data", s->root);
    snprintf(s->ready, sizeof s->ready, "%s/ready", s->root);
    snprintf(s->log, sizeof s->log, "%s/server.log", s->root);
    if (mkdir(s->data, 0755) != 0) fail_msg("mkdir %s: %s", s->data, strerror(errno));
    spawn(s, extra);
}

void server_restart(test_server *s, const char *const *extra)
{
    if (s->pid) fail_msg("server_restart: the server is still running");
    spawn(s, extra);
}

static int wait_exit(pid_t pid, int timeout_ms, int *status)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return 1;
        if (r < 0 && errno != EINTR) return 1;
        if (now_ms() > deadline) return 0;
        sleep_ms(5);
    }
}

int server_stop(test_server *s)
{
    int status = 0;
    if (!s->pid) return 0;
    kill(s->pid, SIGTERM);
    if (!wait_exit(s->pid, SRV_TIMEOUT_MS, &status)) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
        s->pid = 0;
        live_set(s);
        server_fail(s, "the server did not exit within %d ms of SIGTERM", SRV_TIMEOUT_MS);
    }
    s->pid = 0;
    live_set(s);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        server_fail(s, "the server did not exit cleanly on SIGTERM (wait status 0x%x)", status);
    return status;
}

void server_wait_recovered(const test_server *s)
{
    for (int i = 0; i < 2400; i++) {
        json_t *h = http_get_json(s->http_port, "/api/v1/health", 200);
        json_t *r = json_object_get(h, "recovery");
        int done = json_integer_value(json_object_get(r, "passes")) > 0 && !json_is_true(json_object_get(r, "running")) &&
                   json_is_true(json_object_get(r, "ok"));
        json_decref(h);
        if (done) return;
        sleep_ms(50);
    }
    server_fail(s, "recovery did not finish within 120 s");
}

long server_status_kb(const test_server *s, const char *field)
{
    char path[64], line[256];
    size_t flen = strlen(field);
    if (!s->pid) return -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, flen) && line[flen] == ':') v = strtol(line + flen + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

void server_kill(test_server *s)
{
    if (!s->pid) return;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    live_set(s);
}

void server_destroy(test_server *s)
{
    server_kill(s);
    live_server *l = live_find(s->root);
    if (l) l->used = 0;
    if (s->root[0]) remove_tree(s->root);
    s->root[0] = 0;
}

/* ---- one TCP connection -------------------------------------------------------------------- */

int conn_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) fail_msg("connect to port %d: %s", port, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void conn_close(int fd)
{
    if (fd >= 0) close(fd);
}

void conn_send(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail_msg("send %zu bytes: %s", n, w < 0 ? strerror(errno) : "no progress");
        b += w;
        n -= (size_t)w;
    }
}

void conn_send_buf(int fd, const cp_buf *b) { conn_send(fd, b->data, b->len); }

/* One poll+recv step. Returns bytes read (>0), 0 on EOF or reset, -1 on timeout. */
static ssize_t recv_step(int fd, void *p, size_t n, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left < 0) return -1;
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) fail_msg("poll: %s", strerror(errno));
        if (r == 0) return -1;
        ssize_t got = recv(fd, p, n, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got < 0 && errno == ECONNRESET) return 0;
        if (got < 0) fail_msg("recv: %s", strerror(errno));
        return got;
    }
}

void conn_read_exact(int fd, void *p, size_t n, int timeout_ms)
{
    uint8_t *b = p;
    size_t have = 0;
    int64_t deadline = now_ms() + timeout_ms;
    while (have < n) {
        ssize_t got = recv_step(fd, b + have, n - have, deadline);
        if (got == 0) fail_msg("connection closed after %zu of %zu expected reply bytes", have, n);
        if (got < 0) fail_msg("timeout (%d ms) after %zu of %zu expected reply bytes", timeout_ms, have, n);
        have += (size_t)got;
    }
}

void conn_read_to_eof(int fd, cp_buf *out, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    uint8_t tmp[4096];
    for (;;) {
        ssize_t got = recv_step(fd, tmp, sizeof tmp, deadline);
        if (got == 0) return;
        if (got < 0) fail_msg("the server did not close the connection within %d ms (%zu bytes received)", timeout_ms,
                              out->len);
        cp_buf_append(out, tmp, (size_t)got);
    }
}

void conn_expect_eof(int fd, int timeout_ms)
{
    cp_buf extra;
    cp_buf_init(&extra);
    conn_read_to_eof(fd, &extra, timeout_ms);
    size_t n = extra.len;
    int first = n ? extra.data[0] : -1;
    cp_buf_free(&extra);
    if (n) fail_msg("expected the connection to close, got %zu unexpected bytes (first 0x%02x)", n, first);
}

long conn_read_for(int fd, cp_buf *out, int timeout_ms)
{
    uint8_t tmp[4096];
    ssize_t got = recv_step(fd, tmp, sizeof tmp, now_ms() + timeout_ms);
    if (got < 0) return 0;
    if (got == 0) return -1;
    cp_buf_append(out, tmp, (size_t)got);
    return (long)got;
}

/* ---- agent commands ------------------------------------------------------------------------ */

int64_t agent_handshake(int fd, int64_t version, const char *pod, const char *service, const char *ns)
{
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_wire_put_handshake(&b, version, pod, service, ns), CP_OK);
    conn_send_buf(fd, &b);
    cp_buf_free(&b);
    uint8_t reply[8];
    conn_read_exact(fd, reply, 8, SRV_TIMEOUT_MS);
    return (int64_t)cp_be64(reply);
}

void agent_init(int fd, const char *stream, int32_t seq, int32_t reset, uint8_t reply[36])
{
    static const uint8_t zero[16];
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_wire_put_init(&b, stream, seq, reset), CP_OK);
    conn_send_buf(fd, &b);
    cp_buf_free(&b);
    conn_read_exact(fd, reply, 36, SRV_TIMEOUT_MS);
    if (memcmp(reply, zero, 16) == 0) fail_msg("INIT of stream '%s' got a null handle", stream);
}

size_t agent_put_data(cp_buf *b, const uint8_t handle[16], const uint8_t *p, size_t n, size_t chunk)
{
    size_t count = 0;
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = n - off < chunk ? n - off : chunk;
        assert_int_equal(cp_wire_put_data(b, handle, p + off, (uint32_t)len), CP_OK);
        count++;
    }
    return count;
}

size_t agent_send_stream(int fd, const uint8_t handle[16], const uint8_t *p, size_t n, size_t chunk)
{
    cp_buf b;
    cp_buf_init(&b);
    size_t nacks = agent_put_data(&b, handle, p, n, chunk) + 1;
    cp_buf_putc(&b, CP_CMD_ACK_FLUSH);
    conn_send_buf(fd, &b);
    cp_buf_free(&b);
    uint8_t *acks = malloc(nacks);
    conn_read_exact(fd, acks, nacks, SRV_TIMEOUT_MS);
    for (size_t i = 0; i < nacks; i++)
        if (acks[i] != CP_ACK_OK) fail_msg("ack %zu of %zu is 0x%02x, expected 0x00", i + 1, nacks, acks[i]);
    free(acks);
    return nacks;
}

/* ---- the cloudprof CLI --------------------------------------------------------------------- */

int cli_run(cp_buf *out, cp_buf *err, const char *const *args)
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = "cloudprof";
    for (size_t i = 0; args[i]; i++) {
        if (n >= CP_ARRAY_LEN(argv) - 1) fail_msg("too many CLI arguments");
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) fail_msg("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        execv(CLOUDPROF_BIN, (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    cp_buf *dst[2] = {out, err};
    int open_fds = 2;
    int64_t deadline = now_ms() + CLI_TIMEOUT_MS;
    uint8_t tmp[65536];
    while (open_fds > 0) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("cloudprof %s ran for more than %d s", args[0], CLI_TIMEOUT_MS / 1000);
        }
        int r = poll(fds, 2, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) fail_msg("poll: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = read(fds[i].fd, tmp, sizeof tmp);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            if (dst[i]) cp_buf_append(dst[i], tmp, (size_t)got);
        }
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

json_t *cli_emulate(const test_server *s, const char *const *extra)
{
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", s->port);
    const char *argv[32] = {"emulate", "--target", target, "--json", "--quiet"};
    size_t n = 5;
    for (size_t i = 0; extra[i]; i++) {
        if (n >= CP_ARRAY_LEN(argv) - 1) fail_msg("too many emulate arguments");
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int st = cli_run(&out, &err, argv);
    cp_buf_putc(&out, 0);
    cp_buf_putc(&err, 0);
    if (st != 0) server_fail(s, "cloudprof emulate exited %d: %s%s", st, (char *)out.data, (char *)err.data);
    char *text = (char *)out.data;
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') text[--len] = 0;
    char *last = strrchr(text, '\n'); /* the summary is the last line */
    json_error_t jerr;
    json_t *sum = json_loads(last ? last + 1 : text, 0, &jerr);
    if (!sum) fail_msg("summary is not JSON (%s): %s", jerr.text, text);
    print_message("emulate %s\n", last ? last + 1 : text);
    cp_buf_free(&out);
    cp_buf_free(&err);
    return sum;
}

void emulate_start(bg_emulator *e, const test_server *s, const char *const *extra)
{
    static int counter;
    char target[64];
    memset(e, 0, sizeof *e);
    counter++;
    snprintf(e->out, sizeof e->out, "%s/emulate-%d.out", s->root, counter);
    snprintf(e->err, sizeof e->err, "%s/emulate-%d.err", s->root, counter);
    snprintf(target, sizeof target, "127.0.0.1:%d", s->port);
    const char *argv[40] = {"cloudprof", "emulate", "--target", target, "--json", "--quiet"};
    size_t n = 6;
    for (size_t i = 0; extra && extra[i]; i++) {
        if (n >= CP_ARRAY_LEN(argv) - 1) fail_msg("too many emulate arguments");
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    e->pid = spawn_bin(argv, e->out, e->err);
}

static int exit_code(int status)
{
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int emulate_done(bg_emulator *e)
{
    if (!e->pid) return 1;
    int status;
    pid_t r = waitpid(e->pid, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) return 0;
    e->status = r == e->pid ? exit_code(status) : 127;
    e->pid = 0;
    return 1;
}

json_t *emulate_finish(bg_emulator *e, const test_server *s, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (!emulate_done(e)) {
        if (now_ms() > deadline) {
            int status;
            kill(e->pid, SIGKILL);
            waitpid(e->pid, &status, 0);
            e->pid = 0;
            server_fail(s, "cloudprof emulate did not finish within %d ms", timeout_ms);
        }
        sleep_ms(20);
    }
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    (void)cp_read_file(e->out, 64 << 20, &out);
    (void)cp_read_file(e->err, 64 << 20, &err);
    cp_buf_putc(&out, 0);
    cp_buf_putc(&err, 0);
    char *text = (char *)out.data;
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') text[--len] = 0;
    char *last = strrchr(text, '\n'); /* the summary is the last line */
    json_t *sum = len ? json_loads(last ? last + 1 : text, 0, NULL) : NULL;
    printf("emulate (exit %d): %s\n", e->status, last ? last + 1 : text);
    if (err.len > 1) printf("emulate stderr: %.2000s\n", (const char *)err.data);
    if (!sum) server_fail(s, "cloudprof emulate (exit %d) printed no JSON summary: %.2000s", e->status, text);
    cp_buf_free(&out);
    cp_buf_free(&err);
    return sum;
}

const char *const raw_stream_names[RAW_STREAMS] = {"trace", "calls", "xml", "sql", "dictionary", "posDictionary",
                                                   "suspend", "params"};

/* The raw log's files: stored bytes per stream (if stored), the calls records counted. strict:
 * every decoded stream's file must decode whole (else the test fails); otherwise only the
 * calls files are read and their whole records counted. */
static long long raw_walk(const test_server *s, long long stored[RAW_STREAMS], int strict)
{
    raw_entry *e;
    size_t n = raw_list(s, &e);
    long long calls = 0;
    if (stored) memset(stored, 0, RAW_STREAMS * sizeof stored[0]);
    for (size_t i = 0; i < n; i++) {
        char path[4096], torn[4200], why[256]; /* room for raw_tree_path's longest (gcc checks it when inlined) */
        raw_tree_path(s, e[i].ns, e[i].pod, e[i].restart, e[i].stream, e[i].index, path, sizeof path);
        if (stored) {
            snprintf(torn, sizeof torn, "%s.torn", path);
            struct stat sb;
            long long t = stat(torn, &sb) == 0 ? (long long)sb.st_size : 0;
            for (size_t k = 0; k < RAW_STREAMS; k++)
                if (!strcmp(e[i].stream, raw_stream_names[k])) stored[k] += e[i].bytes + t;
        }
        cp_stream_kind kind = cp_stream_kind_parse(e[i].stream);
        if (strict ? !cp_stream_kind_is_decoded(kind) : kind != CP_STREAM_CALLS) continue;
        cp_buf b;
        cp_buf_init(&b);
        load_file(path, &b);
        uint64_t records = 0;
        if (decode_file(e[i].stream, b.data, b.len, &records, why, sizeof why) != CP_OK && strict)
            server_fail(s, "%s does not decode: %s", path, why);
        if (kind == CP_STREAM_CALLS) calls += (long long)records;
        cp_buf_free(&b);
    }
    free(e);
    return calls;
}

long long raw_check(const test_server *s, long long stored[RAW_STREAMS]) { return raw_walk(s, stored, 1); }

long long raw_calls_total(const test_server *s) { return raw_walk(s, NULL, 0); }

static void fail_cli(const char *what, int status, const cp_buf *err)
{
    fail_msg("%s failed (exit %d): %.*s", what, status, (int)(err->len > 2000 ? 2000 : err->len),
             err->data ? (const char *)err->data : "");
}

/* `cloudprof raw` of one stream file, with_torn: followed by its cut-off torn tail. */
static void raw_fetch_file(const test_server *s, const char *ns, const char *pod, const char *stream, int index,
                           int with_torn, cp_buf *out)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%d", index);
    const char *argv[] = {"raw", "--data", s->data, "--namespace", ns, "--pod", pod,
                          "--stream", stream, "--index", idx, with_torn ? "--torn" : NULL, NULL};
    cp_buf err;
    cp_buf_init(&err);
    cp_buf_init(out);
    int st = cli_run(out, &err, argv);
    if (st != 0) {
        char what[512];
        snprintf(what, sizeof what, "cloudprof raw%s --pod %s --stream %s --index %d", with_torn ? " --torn" : "", pod,
                 stream, index);
        fail_cli(what, st, &err);
    }
    cp_buf_free(&err);
}

void raw_fetch(const test_server *s, const char *ns, const char *pod, const char *stream, int index, cp_buf *out)
{
    raw_fetch_file(s, ns, pod, stream, index, 0, out);
}

void raw_fetch_sent(const test_server *s, const char *ns, const char *pod, const char *stream, int index, cp_buf *out)
{
    raw_fetch_file(s, ns, pod, stream, index, 1, out);
}

/* /api/v1/calls/stats's total for [from, to). */
long long api_calls_total(const test_server *s, int64_t from, int64_t to)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/calls/stats?from=%lld&to=%lld", (long long)from, (long long)to);
    json_t *st = http_get_json(s->http_port, path, 200);
    long long n = json_integer_value(json_object_get(st, "total"));
    json_decref(st);
    return n;
}

size_t raw_list(const test_server *s, raw_entry **entries)
{
    const char *argv[] = {"raw", "--data", s->data, "--list", NULL};
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int st = cli_run(&out, &err, argv);
    if (st != 0) fail_cli("cloudprof raw --list", st, &err);
    cp_buf_free(&err);
    char **lines;
    size_t nlines = split_lines((char *)out.data, out.len, &lines);
    raw_entry *v = calloc(nlines + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < nlines; i++) {
        raw_entry *e = &v[n];
        char *f[6];
        size_t nf = 0;
        char *save = NULL;
        for (char *t = strtok_r(lines[i], "\t", &save); t && nf < 6; t = strtok_r(NULL, "\t", &save)) f[nf++] = t;
        char *end;
        if (nf != 6) {
            if (i == 0) continue; /* the header line */
            fail_msg("cloudprof raw --list: line %zu has %zu fields, expected 6", i + 1, nf);
        }
        long idx = strtol(f[4], &end, 10);
        if (*end) {
            if (i == 0) continue; /* the header line */
            fail_msg("cloudprof raw --list: line %zu: bad index '%s'", i + 1, f[4]);
        }
        snprintf(e->ns, sizeof e->ns, "%s", f[0]);
        snprintf(e->pod, sizeof e->pod, "%s", f[1]);
        snprintf(e->restart, sizeof e->restart, "%s", f[2]);
        snprintf(e->stream, sizeof e->stream, "%s", f[3]);
        e->index = (int)idx;
        e->bytes = strtoll(f[5], &end, 10);
        if (*end) fail_msg("cloudprof raw --list: line %zu: bad byte count '%s'", i + 1, f[5]);
        n++;
    }
    free(lines);
    cp_buf_free(&out);
    *entries = v;
    return n;
}

size_t raw_count_pod(const raw_entry *e, size_t n, const char *pod)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i].pod, pod) == 0) k++;
    return k;
}

static void escaped(const char *s, char *out, size_t outlen)
{
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_path_component(&b, s, strlen(s)), CP_OK);
    snprintf(out, outlen, "%.*s", (int)b.len, (const char *)b.data);
    cp_buf_free(&b);
}

void raw_tree_path(const test_server *s, const char *ns, const char *pod, const char *restart, const char *stream,
                   int index, char *out, size_t outlen)
{
    char ens[512], epod[512], estream[256];
    escaped(ns, ens, sizeof ens);
    escaped(pod, epod, sizeof epod);
    escaped(stream, estream, sizeof estream);
    snprintf(out, outlen, "%s/raw/%s/%s/%s/%s/%d", s->data, ens, epod, restart, estream, index);
}

/* ---- checking stored bytes ----------------------------------------------------------------- */

/* Counts records the way `cloudprof decode` prints them: one line per record; for a
 * trace only the events (ENTER, EXIT, TAG). */
static int count_one(void *ud, const void *r)
{
    (void)r;
    ++*(uint64_t *)ud;
    return 0;
}
static int count_word(void *ud, const cp_word_rec *r) { return count_one(ud, r); }
static int count_param(void *ud, const cp_param_rec *r) { return count_one(ud, r); }
static int count_suspend(void *ud, const cp_suspend_rec *r) { return count_one(ud, r); }
static int count_call(void *ud, const cp_call_rec *r) { return count_one(ud, r); }
static int count_value(void *ud, const cp_value_rec *r) { return count_one(ud, r); }
static int count_event(void *ud, const cp_trace_rec *r)
{
    if (r->type == CP_TRACE_ENTER || r->type == CP_TRACE_EXIT || r->type == CP_TRACE_TAG) ++*(uint64_t *)ud;
    return 0;
}

int decode_file(const char *stream, const uint8_t *p, size_t n, uint64_t *records, char *why, size_t whylen)
{
    cp_stream_kind kind = cp_stream_kind_parse(stream);
    *records = 0;
    if (why && whylen) why[0] = 0;
    if (kind == CP_STREAM_UNKNOWN) fail_msg("unknown stream kind '%s'", stream);
    if (!cp_stream_kind_is_decoded(kind)) return CP_OK; /* gc & co: raw text, nothing to decode */
    cp_dec_sink sink = {.ud = records,
                        .on_word = count_word,
                        .on_param = count_param,
                        .on_suspend = count_suspend,
                        .on_call = count_call,
                        .on_trace = count_event,
                        .on_value = count_value};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    assert_non_null(d);
    int st = cp_dec_feed(d, p, n);
    if (st == CP_OK) st = cp_dec_finish(d);
    if (why && whylen) {
        if (st < 0) snprintf(why, whylen, "%s", cp_dec_error(d));
        else if (st == CP_AGAIN)
            snprintf(why, whylen, "torn tail: the clean part ends at %llu of %zu bytes",
                     (unsigned long long)cp_dec_committed(d), n);
    }
    cp_dec_free(d);
    return st;
}

int cli_decode(const test_server *s, const char *kind, const uint8_t *p, size_t n, size_t *lines)
{
    static int counter;
    char path[1200];
    snprintf(path, sizeof path, "%s/decode-%d.%s", s->root, ++counter, kind);
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s", path);
    if (n && fwrite(p, 1, n, f) != n) fail_msg("cannot write %s", path);
    fclose(f);
    const char *argv[] = {"decode", kind, path, NULL};
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int st = cli_run(&out, &err, argv);
    if (st != 0)
        printf("cloudprof decode %s %s: exit %d: %.*s\n", kind, path, st, (int)(err.len > 2000 ? 2000 : err.len),
               err.data ? (const char *)err.data : "");
    size_t k = 0;
    for (size_t i = 0; i < out.len; i++)
        if (out.data[i] == '\n') k++;
    if (out.len && out.data[out.len - 1] != '\n') k++;
    *lines = k;
    cp_buf_free(&out);
    cp_buf_free(&err);
    return st;
}

void assert_bytes_equal(const char *what, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    size_t i = 0;
    while (i < n && a[i] == b[i]) i++;
    if (i == n && alen == blen) return;
    if (i < n)
        fail_msg("%s: %zu bytes vs %zu expected; first difference at offset %zu (0x%02x vs 0x%02x)", what, alen, blen,
                 i, a[i], b[i]);
    fail_msg("%s: %zu bytes vs %zu expected (equal up to the shorter length)", what, alen, blen);
}

/* ---- the catalog --------------------------------------------------------------------------- */

long long catalog_count(const test_server *s, const char *sql, const char *arg)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/catalog.db", s->data);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        char msg[1800];
        snprintf(msg, sizeof msg, "cannot open %s: %s", path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        fail_msg("%s", msg);
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "catalog query '%s': %s", sql, sqlite3_errmsg(db));
        sqlite3_close(db);
        fail_msg("%s", msg);
    }
    if (arg) sqlite3_bind_text(q, 1, arg, -1, SQLITE_TRANSIENT);
    long long v = -1;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) v = sqlite3_column_int64(q, 0);
    char msg[512];
    snprintf(msg, sizeof msg, "catalog query '%s': %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(q);
    sqlite3_close(db);
    if (rc != SQLITE_ROW) fail_msg("%s", msg);
    return v;
}

/* Walks a dictionary or params file and looks every record up in the catalog. */
typedef struct catalog_walk {
    sqlite3_stmt *q;
    const char *pod;
    cp_buf a, b;        /* UTF-8 scratch */
    char err[600];
    size_t checked;
} catalog_walk;

static int utf8(cp_buf *out, cp_str16 s)
{
    cp_buf_reset(out);
    return cp_str16_to_utf8(out, s) == CP_OK && cp_buf_putc(out, 0) == CP_OK ? 0 : 1;
}

static int check_word(void *ud, const cp_word_rec *w)
{
    catalog_walk *cw = ud;
    if (utf8(&cw->a, w->word)) return 1;
    sqlite3_reset(cw->q);
    sqlite3_bind_text(cw->q, 1, cw->pod, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(cw->q, 2, w->id);
    const char *tag = sqlite3_step(cw->q) == SQLITE_ROW ? (const char *)sqlite3_column_text(cw->q, 0) : NULL;
    if (!tag || strcmp(tag, (const char *)cw->a.data) != 0) {
        snprintf(cw->err, sizeof cw->err, "catalog dictionary of %s: position %d is %s%.200s%s, the stream has '%.200s'",
                 cw->pod, w->id, tag ? "'" : "", tag ? tag : "missing", tag ? "'" : "", (const char *)cw->a.data);
        return 1;
    }
    cw->checked++;
    return 0;
}

static int check_param(void *ud, const cp_param_rec *r)
{
    catalog_walk *cw = ud;
    if (utf8(&cw->a, r->name) || utf8(&cw->b, r->signature)) return 1;
    sqlite3_reset(cw->q);
    sqlite3_bind_text(cw->q, 1, cw->pod, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(cw->q, 2, (const char *)cw->a.data, -1, SQLITE_TRANSIENT);
    int ok = sqlite3_step(cw->q) == SQLITE_ROW && sqlite3_column_int(cw->q, 0) == r->index &&
             sqlite3_column_int(cw->q, 1) == r->list && sqlite3_column_int(cw->q, 2) == r->order &&
             sqlite3_column_text(cw->q, 3) && strcmp((const char *)sqlite3_column_text(cw->q, 3), (const char *)cw->b.data) == 0;
    if (!ok) {
        snprintf(cw->err, sizeof cw->err, "catalog params of %s: '%.200s' missing or different from the stream (%d, %d, %d, '%.100s')",
                 cw->pod, (const char *)cw->a.data, r->index, r->list, r->order, (const char *)cw->b.data);
        return 1;
    }
    cw->checked++;
    return 0;
}

static size_t catalog_walk_file(const test_server *s, const char *pod, cp_stream_kind kind, const char *sql,
                                const uint8_t *p, size_t n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/catalog.db", s->data);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        fail_msg("cannot open %s", path);
    }
    sqlite3_busy_timeout(db, 5000);
    catalog_walk cw;
    memset(&cw, 0, sizeof cw);
    cw.pod = pod;
    cp_buf_init(&cw.a);
    cp_buf_init(&cw.b);
    if (sqlite3_prepare_v2(db, sql, -1, &cw.q, NULL) != SQLITE_OK) {
        snprintf(cw.err, sizeof cw.err, "catalog query '%s': %s", sql, sqlite3_errmsg(db));
    } else {
        cp_dec_sink sink = {.ud = &cw, .on_word = check_word, .on_param = check_param};
        cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
        int st = cp_dec_feed(d, p, n);
        if (st == CP_OK) st = cp_dec_finish(d);
        if (st != CP_OK && !cw.err[0]) snprintf(cw.err, sizeof cw.err, "the stream does not decode: %s", cp_dec_error(d));
        cp_dec_free(d);
    }
    sqlite3_finalize(cw.q);
    sqlite3_close(db);
    cp_buf_free(&cw.a);
    cp_buf_free(&cw.b);
    if (cw.err[0]) fail_msg("%s", cw.err);
    return cw.checked;
}

size_t catalog_check_dictionary(const test_server *s, const char *pod, const uint8_t *p, size_t n)
{
    return catalog_walk_file(s, pod, CP_STREAM_DICTIONARY,
                             "SELECT tag FROM dictionary WHERE pod_name = ?1 AND position = ?2", p, n);
}

size_t catalog_check_params(const test_server *s, const char *pod, const uint8_t *p, size_t n)
{
    return catalog_walk_file(s, pod, CP_STREAM_PARAMS,
                             "SELECT param_index, param_list, param_order, signature FROM params "
                             "WHERE pod_name = ?1 AND param_name = ?2",
                             p, n);
}
