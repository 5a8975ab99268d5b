/* fsutil.c -- whole writes, directory fsync, atomic replace, path-component unescape. */
#include "cp_fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int cp_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n) {
        ssize_t w = write(fd, q, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return CP_EIO;
        }
        q += w;
        n -= (size_t)w;
    }
    return CP_OK;
}

int cp_writev_all(int fd, const struct iovec *v, int n)
{
    struct iovec cur[CP_IOV_MAX];
    if (n < 0 || n > CP_IOV_MAX) return CP_EINVAL;
    memcpy(cur, v, (size_t)n * sizeof *cur);
    struct iovec *q = cur;
    while (n > 0) {
        ssize_t w = writev(fd, q, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return CP_EIO;
        }
        while (n > 0 && (size_t)w >= q->iov_len) { /* whole pieces out */
            w -= (ssize_t)q->iov_len;
            q++, n--;
        }
        if (n > 0) { /* a short write ended inside this piece */
            q->iov_base = (uint8_t *)q->iov_base + w;
            q->iov_len -= (size_t)w;
        }
    }
    return CP_OK;
}

int cp_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return CP_EIO;
    int st = CP_OK;
    while (fsync(fd) != 0) {
        if (errno == EINTR) continue;
        st = CP_EIO;
        break;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return st;
}

int cp_write_file_atomic(const char *path, const void *p, size_t n)
{
    char tmp[4096];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return CP_EIO;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return CP_EIO;
    int st = cp_write_all(fd, p, n);
    if (st == CP_OK && fsync(fd) != 0) st = CP_EIO;
    int saved = errno;
    close(fd);
    if (st == CP_OK && rename(tmp, path) != 0) st = CP_EIO;
    if (st != CP_OK) {
        saved = errno;
        unlink(tmp);
        errno = saved;
        return st;
    }
    /* the rename itself is only durable once the directory is synced */
    char dir[4096];
    memcpy(dir, path, strlen(path) + 1);
    return cp_fsync_dir(dirname(dir));
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int cp_path_unescape(cp_buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == '%') {
            if (n - i < 3) return CP_EPROTO;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0) return CP_EPROTO;
            c = (uint8_t)(hi << 4 | lo);
            i += 2;
        }
        if (cp_buf_putc(out, c) != CP_OK) return CP_ENOMEM;
    }
    return CP_OK;
}

long cp_pread_all(int fd, void *p, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)p + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    return (long)got;
}
