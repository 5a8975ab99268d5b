/* sys.c -- clocks, randomness, UUID text, safe path components, small file helpers. */
#include "cp_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t cp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t cp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cp_random_bytes(void *p, size_t n)
{
    uint8_t *q = p;
    while (n) {
        ssize_t r = getrandom(q, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return CP_EIO;
        }
        q += r;
        n -= (size_t)r;
    }
    return CP_OK;
}

void cp_uuid_str(const uint8_t u[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[j++] = '-';
        out[j++] = hex[u[i] >> 4];
        out[j++] = hex[u[i] & 15];
    }
    out[j] = 0;
}

int cp_path_component(cp_buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n == 0) return cp_buf_putc(out, '_');
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '-' || (c == '.' && i > 0);
        int st;
        if (ok) {
            st = cp_buf_putc(out, c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            st = cp_buf_append(out, e, 3);
        }
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

int cp_mkdirs(const char *path, int mode)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return CP_EIO;
    }
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == 0) {
            char c = tmp[i];
            tmp[i] = 0;
            if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST) return CP_EIO;
            tmp[i] = c;
        }
    }
    return CP_OK;
}

int cp_read_file(const char *path, size_t max, cp_buf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? CP_ENOTFOUND : CP_EIO;
    int st = CP_OK;
    for (;;) {
        if (cp_buf_reserve(out, 65536) != CP_OK) {
            st = CP_ENOMEM;
            break;
        }
        ssize_t r = read(fd, out->data + out->len, 65536);
        if (r < 0) {
            if (errno == EINTR) continue;
            st = CP_EIO;
            break;
        }
        if (r == 0) break;
        out->len += (size_t)r;
        if (out->len > max) {
            st = CP_ELIMIT;
            break;
        }
    }
    close(fd);
    return st;
}
