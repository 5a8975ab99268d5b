/* http_util.c -- the tests' HTTP/1.1 client (http_util.h). */
#include "http_util.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static int connect_local(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends a request as curl does: in pieces, stopping when the server has answered early (a
 * 413 before the body) -- writing on would meet a reset that swallows the answer. 0 when
 * everything was sent or an answer waits to be read. */
static int send_request(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t deadline = cp_mono_ns() + (uint64_t)HTTP_UTIL_TIMEOUT_MS * 1000000u;
    while (n) {
        if (cp_mono_ns() >= deadline) return -1;
        struct pollfd q = {fd, POLLIN | POLLOUT, 0};
        if (poll(&q, 1, 1000) < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (q.revents & (POLLIN | POLLHUP)) return 0; /* an early answer, or the server closed */
        if (!(q.revents & POLLOUT)) continue;
        ssize_t w = send(fd, b, n < 65536 ? n : 65536, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (w <= 0) return errno == EPIPE || errno == ECONNRESET ? 0 : -1; /* read what came */
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads everything until EOF (or a reset) into out; -1 on timeout. */
static int read_to_eof(int fd, cp_buf *out)
{
    uint64_t deadline = cp_mono_ns() + (uint64_t)HTTP_UTIL_TIMEOUT_MS * 1000000u;
    for (;;) {
        uint64_t now = cp_mono_ns();
        if (now >= deadline) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) return -1;
        if (cp_buf_reserve(out, 65536) != CP_OK) return -1;
        ssize_t r = recv(fd, out->data + out->len, 65536, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == ECONNRESET) return 0;
        if (r < 0) return -1;
        if (r == 0) return 0;
        out->len += (size_t)r;
    }
}

/* Decodes a chunked body p[0..n) into out; -1 if malformed or incomplete. */
static int dechunk(const uint8_t *p, size_t n, cp_buf *out)
{
    size_t i = 0;
    for (;;) {
        size_t size = 0, digits = 0;
        while (i < n && isxdigit(p[i])) {
            int c = tolower(p[i]);
            size = size * 16 + (size_t)(c <= '9' ? c - '0' : c - 'a' + 10);
            i++;
            if (++digits > 12) return -1;
        }
        if (!digits) return -1;
        while (i < n && p[i] != '\n') i++; /* chunk extensions, CR */
        if (i >= n) return -1;
        i++;
        if (size == 0) return 0; /* trailers ignored */
        if (n - i < size + 2) return -1;
        if (cp_buf_append(out, p + i, size) != CP_OK) return -1;
        i += size + 2; /* CRLF */
    }
}

/* Splits a raw response into status, headers and body. */
static int parse_response(const cp_buf *raw, int head, int *status, cp_buf *body, cp_buf *headers)
{
    const char *s = (const char *)raw->data;
    const char *end = memmem(s, raw->len, "\r\n\r\n", 4);
    if (!end || raw->len < 12 || strncmp(s, "HTTP/1.", 7) != 0) return -1;
    *status = atoi(s + 9);
    size_t hlen = (size_t)(end - s);
    if (headers && cp_buf_append(headers, s, hlen) != CP_OK) return -1;
    const uint8_t *b = raw->data + hlen + 4;
    size_t blen = raw->len - hlen - 4;
    cp_buf hb = {(uint8_t *)s, hlen, hlen};
    char v[64];
    if (head || !body) return 0;
    if (http_header(&hb, "Transfer-Encoding", v, sizeof v) && strstr(v, "chunked")) return dechunk(b, blen, body);
    if (http_header(&hb, "Content-Length", v, sizeof v)) {
        size_t want = (size_t)strtoull(v, NULL, 10);
        if (blen < want) return -1;
        blen = want;
    }
    return cp_buf_append(body, b, blen) == CP_OK ? 0 : -1;
}

int http_request(int port, const char *method, const char *path, const char *extra_headers, const void *data,
                 size_t n, int *status, cp_buf *body, cp_buf *headers)
{
    *status = 0;
    if (body) cp_buf_reset(body);
    if (headers) cp_buf_reset(headers);
    cp_buf req, raw;
    cp_buf_init(&req);
    cp_buf_init(&raw);
    cp_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s", method, path, port,
                  extra_headers ? extra_headers : "");
    if (data) cp_buf_printf(&req, "Content-Length: %zu\r\n", n);
    cp_buf_puts(&req, "\r\n");
    if (data) cp_buf_append(&req, data, n);
    int rc = -1;
    int fd = connect_local(port);
    if (fd >= 0 && send_request(fd, req.data, req.len) == 0 && read_to_eof(fd, &raw) == 0)
        rc = parse_response(&raw, !strcmp(method, "HEAD"), status, body, headers);
    if (fd >= 0) close(fd);
    cp_buf_free(&req);
    cp_buf_free(&raw);
    return rc;
}

int http_get(int port, const char *path, int *status, cp_buf *body, cp_buf *headers)
{
    return http_request(port, "GET", path, NULL, NULL, 0, status, body, headers);
}

int http_post(int port, const char *path, const char *content_type, const void *data, size_t n, int *status,
              cp_buf *body, cp_buf *headers)
{
    char h[256];
    snprintf(h, sizeof h, "Content-Type: %s\r\n", content_type ? content_type : "application/json");
    return http_request(port, "POST", path, h, data ? data : "", n, status, body, headers);
}

int http_raw(int port, const void *req, size_t n, cp_buf *response)
{
    cp_buf_reset(response);
    int fd = connect_local(port);
    if (fd < 0) return -1;
    int rc = -1;
    if (send_all(fd, req, n) == 0) {
        shutdown(fd, SHUT_WR); /* a cut request: the server sees the end of it */
        rc = read_to_eof(fd, response);
    }
    close(fd);
    return rc;
}

int http_header(const cp_buf *headers, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    const char *s = (const char *)headers->data, *end = s + headers->len;
    while (s && s < end) {
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        const char *le = eol ? eol : end;
        if ((size_t)(le - s) > nl && s[nl] == ':' && !strncasecmp(s, name, nl)) {
            const char *v = s + nl + 1;
            while (v < le && *v == ' ') v++;
            size_t vl = (size_t)(le - v);
            while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' ')) vl--;
            if (vl >= outlen) vl = outlen - 1;
            memcpy(out, v, vl);
            out[vl] = 0;
            return 1;
        }
        s = eol ? eol + 1 : NULL;
    }
    return 0;
}

json_t *http_get_json(int port, const char *path, int want_status)
{
    int status;
    cp_buf body;
    cp_buf_init(&body);
    if (http_get(port, path, &status, &body, NULL) != 0) fail_msg("GET %s: no valid HTTP response", path);
    if (status != want_status)
        fail_msg("GET %s: status %d, want %d; body: %.*s", path, status, want_status, (int)(body.len > 2000 ? 2000 : body.len),
                 body.data ? (const char *)body.data : "");
    json_error_t err;
    json_t *doc = json_loadb((const char *)body.data, body.len, 0, &err);
    if (!doc) fail_msg("GET %s: body is not JSON (%s): %.*s", path, err.text, (int)(body.len > 500 ? 500 : body.len),
                       body.data ? (const char *)body.data : "");
    cp_buf_free(&body);
    return doc;
}
