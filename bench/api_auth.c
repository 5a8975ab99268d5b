/* api_auth.c -- a small keep-alive HTTP/1.1 load generator for bench/api_auth.sh (issue 17):
 * API requests per second with a bearer token (--auth oidc) against the same requests
 * without one (--auth none), measured in the same run.
 *
 * usage: bench_api_auth --port N --auth-port M --token-file F --path PATH [--conns N]
 *                       [--slices K] [--slice-ms MS]
 * Two servers run at once: port without login, auth-port with --auth oidc. Each of --conns
 * threads keeps one connection to each and sends GET PATH back to back (to auth-port with
 * `Authorization: Bearer <token>`), reading each answer (Content-Length bodies) before the
 * next; every answer must be 200. The load goes to one server at a time, in slices of
 * slice-ms alternating A B B A A B ... (so a machine whose background load drifts weighs on
 * both alike). Prints one line:
 *   `none_rps R1 oidc_rps R2 ratio X requests N1 N2 errors E`.
 * Only loopback is ever a target. */
#include "common/cp_common.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

static int ports[2];
static char requests[2][20000];
static size_t request_lens[2];
static atomic_long done_requests[2], errors;
static atomic_int stop, phase;

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One request and its answer: 0 (a 200), -1 otherwise (the connection is dropped). */
static int one_request(int fd, const char *request, size_t request_len, char *buf, size_t cap)
{
    for (size_t off = 0; off < request_len;) {
        ssize_t n = write(fd, request + off, request_len - off);
        if (n <= 0) return -1;
        off += (size_t)n;
    }
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        if (have == cap - 1) return -1;
        ssize_t n = read(fd, buf + have, cap - 1 - have);
        if (n <= 0) return -1;
        have += (size_t)n;
        buf[have] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    int ok = !strncmp(buf, "HTTP/1.1 200", 12);
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!cl || cl > end) return -1;
    size_t body = strtoul(cl + 17, NULL, 10), got = have - (size_t)(end + 4 - buf);
    while (got < body) {
        ssize_t n = read(fd, buf, cap < body - got ? cap : body - got);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return ok && got == body ? 0 : -1;
}

static void *worker(void *arg)
{
    (void)arg;
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    int fd[2] = {-1, -1};
    while (!atomic_load(&stop)) {
        int k = atomic_load(&phase);
        if (fd[k] < 0 && (fd[k] = dial(ports[k])) < 0) {
            atomic_fetch_add(&errors, 1);
            usleep(1000);
            continue;
        }
        if (one_request(fd[k], requests[k], request_lens[k], buf, cap) == 0) {
            atomic_fetch_add(&done_requests[k], 1);
        } else {
            atomic_fetch_add(&errors, 1);
            close(fd[k]);
            fd[k] = -1;
        }
    }
    for (int k = 0; k < 2; k++)
        if (fd[k] >= 0) close(fd[k]);
    free(buf);
    return NULL;
}

static int make_request(int k, const char *path, const char *auth)
{
    int n = snprintf(requests[k], sizeof requests[k], "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sAccept: */*\r\n\r\n",
                     path, ports[k], auth);
    if (n <= 0 || (size_t)n >= sizeof requests[k]) return -1;
    request_lens[k] = (size_t)n;
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *token_file = NULL;
    int conns = 4, slices = 20, slice_ms = 500;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) ports[0] = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--auth-port")) ports[1] = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--path")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--token-file")) token_file = argv[i + 1];
        else if (!strcmp(argv[i], "--conns")) conns = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--slices")) slices = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--slice-ms")) slice_ms = atoi(argv[i + 1]);
        else return fprintf(stderr, "api_auth: unknown option %s\n", argv[i]), 2;
    }
    if (ports[0] <= 0 || ports[1] <= 0 || !path || !token_file || conns <= 0 || conns > 256 || slices <= 0 ||
        slices > 10000 || slice_ms < 10 || slice_ms > 60000) {
        fprintf(stderr, "usage: %s --port N --auth-port M --token-file F --path PATH [--conns N] [--slices K] "
                        "[--slice-ms MS]\n", argv[0]);
        return 2;
    }
    char tok[16384], auth[16500];
    FILE *f = fopen(token_file, "r");
    if (!f || !fgets(tok, sizeof tok, f)) return fprintf(stderr, "api_auth: cannot read %s\n", token_file), 1;
    fclose(f);
    tok[strcspn(tok, "\r\n")] = 0;
    snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", tok);
    if (make_request(0, path, "") || make_request(1, path, auth)) return fprintf(stderr, "api_auth: too long\n"), 2;

    pthread_t *t = calloc((size_t)conns, sizeof *t);
    for (int i = 0; i < conns; i++) pthread_create(&t[i], NULL, worker, NULL);
    int64_t spent[2] = {0, 0};
    long before[2] = {0, 0};
    for (int s = 0; s < slices; s++) {
        int k = ((s + 1) / 2) % 2; /* A B B A A B B ... */
        atomic_store(&phase, k);
        usleep(20000); /* requests of the other phase still in flight finish */
        long c0 = atomic_load(&done_requests[k]);
        int64_t t0 = cp_now_ms();
        usleep((useconds_t)slice_ms * 1000);
        spent[k] += cp_now_ms() - t0;
        before[k] += atomic_load(&done_requests[k]) - c0;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < conns; i++) pthread_join(t[i], NULL);
    double r0 = (double)before[0] * 1000.0 / (double)spent[0], r1 = (double)before[1] * 1000.0 / (double)spent[1];
    long e = atomic_load(&errors);
    printf("none_rps %.0f oidc_rps %.0f ratio %.3f requests %ld %ld errors %ld\n", r0, r1, r1 / r0, before[0],
           before[1], e);
    free(t);
    return before[0] > 0 && before[1] > 0 && e == 0 ? 0 : 1;
}
